"""`zkafka cluster up|status|down`: a local multi-broker cluster for development.

    zkafka cluster up --brokers 3                 # embedded ZooKeeper, brokers 1..3, web console
    zkafka cluster up --brokers 3 --zookeepers 3 --chroot /kafka   # a 3-member ensemble
    zkafka cluster up --brokers 1 --zookeeper 127.0.0.1:2181/dev --override log.retention.ms=60000
    zkafka cluster up --security                  # + a SASL_SSL listener per broker, ACL authorizer
    zkafka cluster up --netns                     # each broker in its own network namespace (root)
    zkafka cluster status [--json]
    zkafka cluster down

Everything lives under `--dir` (default ./.zkafka/cluster): each broker's server.properties, log
directory and server.log, the embedded ZooKeeper's data, and cluster.json, which records ports
and pids so that `status` and `down` find them, and the other tools too: without
`--bootstrap-server`/`--zookeeper` they use the cluster running in `--cluster-dir` (the same default,
see `zkafka.cli.target`). `up` on a directory whose cluster is stopped starts it again with the
same data. `up` prints its progress on stderr and its result (the addresses) on stdout; it also
starts the web console (`zkafka ui`, see `zkafka.console`) on a free port unless `--no-ui`.

`up --security` (`zkafka.local.security`) gives every broker a SASL_SSL listener (SCRAM-SHA-512 and
PLAIN) beside PLAINTEXT, which stays the inter-broker listener; a CA and broker certificate are made
into DIR/tls at each start, and cluster.json records the CA's path (`ca_path`) and the PLAIN super
user's client config (`admin_client_config`). `status` lists each broker's listeners.

`up --netns` (Linux, as root; `zkafka.local.netns`) runs every broker in its own network namespace
on a private 10.213.S.0/24 behind a bridge, where the embedded ZooKeeper listens: what `zkafka
chaos --faults partition` needs to cut a broker's link. `down` removes the namespaces again.
`up --log-dir-size 64m` (Linux, root; `zkafka.local.mounts`) makes each broker's log dir a tmpfs of
that size, for `zkafka chaos --faults disk-full`; `down` unmounts them (their data is gone then).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from zkafka.cli.errors import CliError
from zkafka.cli.output import console, print_table, quiet_libraries
from zkafka.cli.target import DEFAULT_CLUSTER_DIR, load_local_cluster
from zkafka.client.config import parse_key_values
from zkafka.client.errors import ConfigError
from zkafka.local.launcher import EMBEDDED, ClusterError, LocalCluster
from zkafka.local.mounts import MountError
from zkafka.local.netns import NetnsError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cluster", help="run a local cluster: up, status, down")
    cluster_sub = p.add_subparsers(dest="cluster_command", metavar="COMMAND", required=True)

    up = cluster_sub.add_parser("up", help="start ZooKeeper (embedded by default) and N brokers")
    up.add_argument("--brokers", type=int, default=1, metavar="N", help="number of brokers (default 1)")
    up.add_argument(
        "--zookeeper",
        default=EMBEDDED,
        metavar="embedded|HOST:PORT[/chroot]",
        help="start an embedded ZooKeeper (default) or use this one",
    )
    up.add_argument(
        "--zookeepers",
        type=int,
        choices=(1, 3, 5),
        default=1,
        metavar="1|3|5",
        help="members of the embedded ZooKeeper: 1 (default) or an ensemble of 3 or 5",
    )
    up.add_argument(
        "--chroot",
        default="",
        metavar="/PATH",
        help="with an embedded ensemble: the brokers' chroot in zookeeper.connect (default none)",
    )
    _add_dir(up)
    up.add_argument(
        "--override", action="append", metavar="KEY=VALUE", help="broker config for every broker (repeatable)"
    )
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for readiness (default 60)")
    up.add_argument("--no-ui", action="store_true", help="do not start the web console (`zkafka ui`)")
    up.add_argument(
        "--ui-port", type=int, default=0, metavar="PORT", help="the web console's port (default: a free one)"
    )
    up.add_argument(
        "--security",
        action="store_true",
        help="also a SASL_SSL listener (SCRAM-SHA-512, PLAIN) on every broker, TLS material made in "
        "DIR/tls, and the ACL authorizer (PLAINTEXT stays, for the brokers and as a super user)",
    )
    up.add_argument(
        "--netns",
        action="store_true",
        help="run each broker in its own network namespace on a private bridge (Linux, root): "
        "for `zkafka chaos --faults partition`",
    )
    up.add_argument(
        "--log-dir-size",
        default="",
        metavar="SIZE",
        help="each broker's log dir a tmpfs of SIZE (e.g. 64m; Linux, root; the data is gone at "
        "`cluster down`): for `zkafka chaos --faults disk-full`",
    )
    up.set_defaults(func=run_up)

    status = cluster_sub.add_parser("status", help="brokers, controller, topics (from ZooKeeper)")
    _add_dir(status)
    status.add_argument("--json", action="store_true", help="print JSON instead of tables")
    status.add_argument(
        "--exclude-internal",
        action="store_true",
        help="leave out internal topics such as __consumer_offsets (as kafka-topics --exclude-internal)",
    )
    status.set_defaults(func=run_status)

    down = cluster_sub.add_parser("down", help="stop the brokers (SIGTERM, then SIGKILL) and ZooKeeper")
    _add_dir(down)
    down.add_argument("--timeout", type=float, default=30.0, help="seconds before SIGKILL (default 30)")
    down.set_defaults(func=run_down)


def _add_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--dir",
        "--cluster-dir",
        dest="dir",
        type=Path,
        default=DEFAULT_CLUSTER_DIR,
        help=f"cluster directory (default {DEFAULT_CLUSTER_DIR}; the other tools find the cluster there)",
    )


# -- up ------------------------------------------------------------------------------------------


def run_up(args: argparse.Namespace) -> int:
    quiet_libraries()
    if args.brokers < 1:
        raise CliError("--brokers must be >= 1")
    try:
        overrides = parse_key_values(args.override, what="--override")
    except ConfigError as e:
        raise CliError(str(e)) from None
    if args.zookeepers > 1 and args.zookeeper != EMBEDDED:
        raise CliError("--zookeepers starts an embedded ensemble: it cannot go with --zookeeper HOST:PORT")
    if args.chroot and (args.zookeepers == 1 or not args.chroot.startswith("/") or args.chroot == "/"):
        raise CliError("--chroot needs --zookeepers 3|5 and a path such as /kafka")
    if args.zookeeper != EMBEDDED:
        from zkafka.zk.connect import parse_connect_string

        try:
            parse_connect_string(args.zookeeper)
        except ValueError as e:
            raise CliError(f"bad --zookeeper: {e}") from None
    directory: Path = args.dir
    if (directory / "cluster.json").exists():
        previous = load_local_cluster(directory)
        if previous.running():
            raise CliError(
                f"a cluster is already running in {directory} (`zkafka cluster down --dir {directory}`)"
            )
        _same_zookeeper(previous, args)
        try:  # what a crashed run left: its namespaces and log dir mounts
            previous.release_host_resources()
        except (NetnsError, MountError) as e:
            raise CliError(str(e)) from None
    cluster = LocalCluster(directory)
    try:
        _up_with_progress(cluster, args, overrides)
    except (ClusterError, NetnsError, MountError, OSError, ValueError) as e:
        raise CliError(str(e)) from None
    print(f"bootstrap servers: {cluster.bootstrap_servers}")
    print(f"zookeeper: {cluster.zookeeper_connect}")
    if cluster.security:
        print(f"SASL_SSL: {cluster.listener_bootstrap('SASL_SSL')}")
        print(f"CA certificate: {cluster.ca_path}")
        print(f"admin client config: {cluster.admin_client_config}")
    metrics = [b.metrics for _, b in sorted(cluster.brokers.items()) if b.metrics]
    if metrics:
        print(f"metrics: {' '.join(metrics)}")
    if not args.no_ui:
        _start_console(cluster, args.ui_port)
    return 0


def _start_console(cluster: LocalCluster, port: int) -> None:
    """The web console next to the cluster; a console that cannot start is reported, and the
    cluster, which did start, stays up."""
    if not 0 <= port <= 65535:
        raise CliError(f"--ui-port must be 0..65535, got {port}")
    try:
        url = cluster.start_console(port)
    except (ClusterError, OSError) as e:
        console(stderr=True).print(f"[yellow]![/yellow] {e}")
        return
    finally:
        cluster.save()
    console(stderr=True).print(f"[green]✓[/green] web console on {url}")
    print(f"console: {url}")


def _same_zookeeper(previous: LocalCluster, args: argparse.Namespace) -> None:
    """Starting a stopped cluster again needs the ZooKeeper it had: its metadata is there (a
    different one would meet brokers whose logs name topics it has never heard of)."""
    members = len(previous.zookeepers) or 1
    if previous.zookeeper_embedded and args.zookeeper == EMBEDDED and members != args.zookeepers:
        raise CliError(
            f"the cluster in {args.dir} was started with --zookeepers {members}: pass the same "
            "(or `rm -r` the directory for a new cluster)"
        )
    chroot = previous.zookeeper_connect.partition("/")[2]
    if previous.zookeepers and f"/{chroot}" != (args.chroot or "/"):
        raise CliError(
            f"the cluster in {args.dir} was started with --chroot /{chroot}: pass the same"
            if chroot
            else f"the cluster in {args.dir} was started without --chroot"
        )


def _up_with_progress(cluster: LocalCluster, args: argparse.Namespace, overrides: dict[str, str]) -> None:
    err = console(stderr=True)
    with err.status(f"starting a {args.brokers}-broker cluster in {args.dir}") as status:

        def progress(message: str) -> None:
            status.update(message)
            err.print(f"[green]✓[/green] {message}")

        cluster.up(
            args.brokers,
            zookeeper=args.zookeeper,
            zookeepers=args.zookeepers,
            chroot=args.chroot,
            overrides=overrides,
            timeout=args.timeout,
            progress=progress,
            security=args.security,
            netns=args.netns,
            log_dir_size=args.log_dir_size,
        )


# -- status --------------------------------------------------------------------------------------


def run_status(args: argparse.Namespace) -> int:
    quiet_libraries()
    cluster = load_local_cluster(args.dir)
    report = cluster.process_status()
    report.update(zookeeper_view(cluster))
    if args.exclude_internal and "topics" in report:
        from zkafka.zk.topic_names import is_internal_topic

        report["topics"] = {t: p for t, p in report["topics"].items() if not is_internal_topic(t)}
    if args.json:
        json.dump(report, sys.stdout, indent=2)
        print()
    else:
        _print_status(report)
    return 0


def zookeeper_view(cluster: LocalCluster, timeout_s: float = 5.0) -> dict[str, Any]:
    """Registered brokers, controller and topics as ZooKeeper holds them."""
    if not cluster.zookeeper_alive():
        return {"zookeeper_error": f"ZooKeeper at {cluster.zookeeper_connect} is not running"}
    from zkafka.zk.client import KafkaZkClient
    from zkafka.zk.errors import ZkError
    from zkafka.zk.model import TopicPartition

    try:
        zk = KafkaZkClient(
            cluster.zookeeper_connect, connection_timeout_ms=int(timeout_s * 1000), create_chroot=False
        )
    except (ZkError, ValueError) as e:
        return {"zookeeper_error": str(e)}
    try:
        registered = {
            info.id: {"endpoints": [e.connection_string for e in info.endpoints], "epoch": epoch}
            for info, epoch in zk.get_all_brokers_and_epochs().values()
        }
        controller_id = zk.get_controller_id()
        epoch = zk.get_controller_epoch()
        topics = {}
        names = zk.get_all_topics()
        assignments = zk.get_topic_assignments(names)
        tps = [TopicPartition(t, p) for t, a in assignments.items() for p in a.partitions]
        states = zk.get_partition_states(tps)
        for name in names:
            assignment = assignments.get(name)
            partitions = []
            for p, replicas in sorted((assignment.partitions if assignment else {}).items()):
                state = states.get(TopicPartition(name, p))
                lai = state.leader_and_isr if state else None
                partitions.append(
                    {
                        "partition": p,
                        "replicas": list(replicas),
                        "leader": lai.leader if lai else None,
                        "leader_epoch": lai.leader_epoch if lai else None,
                        "isr": list(lai.isr) if lai else [],
                    }
                )
            topics[name] = partitions
    except ZkError as e:
        return {"zookeeper_error": str(e)}
    finally:
        zk.close()
    return {
        "registered_brokers": registered,
        "controller": {"id": controller_id, "epoch": epoch[0] if epoch else None},
        "topics": topics,
    }


def _print_status(report: dict[str, Any]) -> None:
    from rich.table import Table

    out = console()
    zk = report["zookeeper"]
    alive = "[green]alive[/green]" if zk["alive"] else "[red]down[/red]"
    kind = "embedded" if zk["embedded"] else "external"
    ensemble = "embedded ensemble" if len(zk["members"]) > 1 and zk["embedded"] else kind
    pid = f", pid {zk['pid']}" if zk["pid"] else ""
    out.print(f"ZooKeeper {zk['connect']} ({ensemble}{pid}): {alive}")
    members = Table(title="ZooKeeper", title_justify="left")
    for column in ("Id", "Address", "Pid", "Process", "Role"):
        members.add_column(column)
    for m in zk["members"]:
        members.add_row(
            str(m["id"]),
            m["address"],
            str(m["pid"] or "-"),
            "[green]alive[/green]" if m["alive"] else "[red]down[/red]",
            m["role"] or "[red]not serving[/red]",
        )
    print_table(out, members)
    ui = report.get("ui") or {}
    if ui.get("url"):
        state = "[green]alive[/green]" if ui["alive"] else "[red]down[/red]"
        out.print(f"Web console {ui['url']} (pid {ui['pid'] or '-'}): {state}")
    registered = report.get("registered_brokers", {})
    controller = report.get("controller", {})
    brokers = Table(title="Brokers", title_justify="left")
    for column in ("Id", "Listeners", "Metrics", "Pid", "Process", "Registered", "Role"):
        brokers.add_column(column)
    for b in report["brokers"]:
        reg = registered.get(b["id"]) if registered else None
        brokers.add_row(
            str(b["id"]),
            " ".join(b.get("listeners") or [b["endpoint"]]),
            b.get("metrics") or "-",
            str(b["pid"] or "-"),
            "[green]alive[/green]" if b["alive"] else "[red]dead[/red]",
            "yes" if reg else "[red]no[/red]",
            "controller" if controller.get("id") == b["id"] else "",
        )
    print_table(out, brokers)
    if report.get("ca_path"):
        out.print(f"CA certificate of the SASL_SSL listeners: {report['ca_path']}")
    if "zookeeper_error" in report:
        out.print(f"[red]cannot read ZooKeeper: {report['zookeeper_error']}[/red]")
        return
    out.print(f"Controller: {controller.get('id')} (epoch {controller.get('epoch')})")
    topics = Table(title="Topics", title_justify="left")
    for column in ("Topic", "Partition", "Leader", "Replicas", "Isr"):
        topics.add_column(column)
    for name, partitions in report["topics"].items():
        for part in partitions:
            under = len(part["isr"]) < len(part["replicas"])
            isr = ",".join(map(str, part["isr"]))
            topics.add_row(
                name,
                str(part["partition"]),
                "[red]none[/red]" if part["leader"] in (None, -1) else str(part["leader"]),
                ",".join(map(str, part["replicas"])),
                f"[yellow]{isr}[/yellow]" if under else isr,
            )
    print_table(out, topics)


# -- down ----------------------------------------------------------------------------------------


def run_down(args: argparse.Namespace) -> int:
    quiet_libraries()
    cluster = load_local_cluster(args.dir)
    try:
        if not cluster.running():
            cluster.release_host_resources()  # namespaces and mounts outlive crashed processes
            print(f"cluster in {args.dir} is not running")
            return 0
        cluster.down(timeout=args.timeout)
    except (NetnsError, MountError) as e:
        raise CliError(f"{e} (as root: `ip netns list`, `mount | grep {args.dir}`)") from None
    for broker in cluster.brokers.values():
        broker.pid = 0
    cluster.zookeeper_pid = 0
    for member in cluster.zookeepers.values():
        member.pid = 0
    cluster.save()
    print(f"stopped cluster in {args.dir}")
    return 0
