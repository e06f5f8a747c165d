"""Fault injection against a running cluster (`zkafka chaos`, issue 19 item 3): so far only the
checker (`checker.py`), which turns what producers acknowledged, what consumers returned and the
log read back at the end into a verdict of Jepsen's anomaly kinds. Pure: no I/O. The workload and
the nemesis (broker kill and pause, controller kill, ZooKeeper member kill, partitions, disk full)
are still to come.
"""
