"""One spec per API, written by zkafka from the protocol's facts (see `zkafka.protocol.schema`).

`SPECS` maps api key to `ApiSpec`; it is the single source for `messages/` (generated classes)
and for the codecs compiled at run time.
"""

from __future__ import annotations

from zkafka.protocol.schema import ApiSpec
from zkafka.protocol.schemas import (
    alter_configs,
    alter_partition_reassignments,
    api_versions,
    controlled_shutdown,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    elect_leaders,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leader_and_isr,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    stop_replica,
    sync_group,
    update_metadata,
)

_MODULES = (
    produce,
    fetch,
    list_offsets,
    metadata,
    leader_and_isr,
    stop_replica,
    update_metadata,
    controlled_shutdown,
    offset_commit,
    offset_fetch,
    find_coordinator,
    join_group,
    heartbeat,
    leave_group,
    sync_group,
    describe_groups,
    list_groups,
    sasl_handshake,
    api_versions,
    create_topics,
    delete_topics,
    delete_records,
    init_producer_id,
    offset_for_leader_epoch,
    describe_configs,
    alter_configs,
    create_partitions,
    delete_groups,
    elect_leaders,
    incremental_alter_configs,
    alter_partition_reassignments,
    list_partition_reassignments,
    offset_delete,
    sasl_authenticate,
    describe_acls,
    create_acls,
    delete_acls,
    describe_log_dirs,
    describe_cluster,
)

SPECS: dict[int, ApiSpec] = {m.SPEC.key: m.SPEC for m in _MODULES}

# Module basename per api key: the generated classes live in `zkafka.protocol.messages.<module>`.
MODULE_NAMES: dict[int, str] = {m.SPEC.key: m.__name__.rsplit(".", 1)[1] for m in _MODULES}
