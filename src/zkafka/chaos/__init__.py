"""Fault injection against a running cluster (`zkafka chaos`, issue 19 items 3 and 4): a local one
(`--dir`) or one found through ZooKeeper whose broker processes run on this machine (`targets.py`:
the processes by listening port, and the faults such a cluster cannot take); the workload
(`workload.py`: producers, a consumer, consumer-group members), the nemesis (`nemesis.py`: broker
kill and pause, controller kill, ZooKeeper member kill, a cut network link, a full log dir, an
unclean election, the last replica standing losing its unflushed tail), one run (`run.py`), and
two pure checkers (no I/O): `checker.py`, which turns what producers acknowledged, what consumers
returned and the log read back at the end into a verdict of Jepsen's anomaly kinds, and
`txn_checker.py`, the same for a transactional consume-transform-produce run (lost writes,
duplicates, aborted reads, torn transactions, offsets going backwards or skipping).
"""
