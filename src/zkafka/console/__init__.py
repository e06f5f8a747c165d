"""The web console (`zkafka ui`): the cluster seen in a browser, from the same code the CLI uses.

A Starlette application (`app.build_app`) served by uvicorn (`server.serve`), with server-rendered
Jinja templates (autoescaped: record contents, znode data and Kafka's error texts are shown as
text, never as markup) and one stylesheet served by the console itself (no CDN: machines running
it may be offline). Pages have stable URLs, one routes module per page family:

    /                                   overview: brokers (alive or dead), controller, doctor findings
    /brokers                            brokers with their endpoints, racks and epochs
    /topics, /topics/<name>             partitions, leaders, replicas, ISR, offsets, configs
    /topics/<name>/records?partition=P&offset=O&format=text|json|hex   (or &timestamp=MS)
    /groups, /groups/<id>               both kinds of group, members, assignments, per-partition lag
    /zookeeper?path=/...                the raw ZooKeeper tree, read-only

Data comes through zkafka's client library (`zkafka.client`: the admin client, `GroupAdmin`, a
consumer for records) and, when a ZooKeeper connect string is known, through the doctor's decoded
view of the tree (`zkafka.doctor`), which also gives the overview its findings and the seeds'
ZooKeeper consumer groups (`source.py` holds the connections; `*_data.py` turn them into what the
pages show). When no broker answers, the overview shows what ZooKeeper says instead. Two
actions, creating a topic and resetting a group's offsets (`group_reset.py`: planned, shown, then
committed; refused while the group has live members), go through a confirmation page, are refused
in `--read-only` mode, and are taken only from the console's own pages (a form posted from another
origin is a 403: the console does not authenticate yet). Bad URLs and form values answer an error
page with the right HTTP status (`errors.py`), never a traceback. Only `zkafka.cli` imports this package.
"""
