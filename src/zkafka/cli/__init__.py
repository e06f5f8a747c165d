"""The `zkafka` command (`main.py`): one module per command group, with Kafka's flags and output.

Shared by the commands: `output` (the one console policy: results on stdout, progress on stderr,
piped output neither wrapped nor coloured), `target` (where a tool connects: `--bootstrap-server`,
`--zookeeper`, or the running `zkafka cluster up` cluster), `topics.client_errors` (client and
broker errors as one-line errors), `errors.CliError`.
"""
