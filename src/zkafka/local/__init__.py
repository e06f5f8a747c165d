"""Running zkafka on one machine: development clusters and the processes tests start.

* `zookeeper` runs Debian's real ZooKeeper server as a child process (`zkafka zookeeper-start`,
  the embedded ZooKeeper of `zkafka cluster up`, the test fixtures), with `free_port` and
  `four_letter_word`;
* `launcher` starts and stops local broker processes: `LocalCluster` (`zkafka cluster up|down`,
  `zkafka demo`, tests and benchmarks), whose layout `<dir>/cluster.json` records so other
  processes (`cluster status|down`, the tools finding a running cluster) can find it;
* `security` is what `cluster up --security` adds: TLS material made at start (a CA and the brokers'
  certificate, with `cryptography`) and the keys of a SASL_SSL listener beside PLAINTEXT, with the
  ACL authorizer.

Nothing here runs inside a broker: the runtime packages never import it.
"""
