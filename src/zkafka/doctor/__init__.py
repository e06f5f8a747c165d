"""`zkafka doctor`: the whole cluster checked from its ZooKeeper tree, with findings that say how
to fix what they find.

A check never talks to ZooKeeper itself. `snapshot.read_snapshot` reads the tree once (pipelined,
znode by znode, so one unreadable znode is a finding, never a stop), `view.decode_snapshot` decodes
every znode against Kafka's schema for its path (the first family of findings), and the checks are
pure functions of the decoded view (`checks_partitions`, `checks_admin`, `checks_consumers`,
`checks_configs`): the same view can serve the web console, and each check is tested against a
real, deliberately damaged tree. `repair` applies the fixes a finding marks as safe.

With `--bootstrap-server` the caller (which owns the client) also gathers what only the brokers
know into `checks_brokers.BrokerFacts`, and pure checks run over it too: log dirs offline or
nearly full, ZooKeeper consumers' offsets outside the logs (`checks_brokers`), and brokers whose
configs disagree on the settings that must be the same cluster-wide (`checks_broker_configs`,
which lists them and why). A broker that does not answer is a finding of its own, never a stop.

Severity follows monitoring plugins: a run's exit status is 0 when healthy, 1 with warnings only,
2 with anything critical (`findings.exit_status`).

Depends on storage (topic config rules), config (broker defaults) and zk (paths and codecs) only.
"""

from zkafka.doctor.findings import Finding, Repair, Severity, exit_status
from zkafka.doctor.run import DoctorSettings, diagnose

__all__ = ["DoctorSettings", "Finding", "Repair", "Severity", "diagnose", "exit_status"]
