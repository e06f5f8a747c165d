"""Request handlers, one module per API family; `HANDLERS` maps api keys to them.

A handler is `handle(ctx, request)`; what it may use of the broker is `ctx.services`
(`zkafka.server.services.BrokerServices`)."""

from __future__ import annotations

from zkafka.protocol import ApiKey
from zkafka.server.apis import (
    acls,
    api_versions,
    cluster,
    config_changes,
    configs,
    controlled_shutdown,
    controller_requests,
    delete_records,
    fetch,
    groups,
    leader_epochs,
    list_offsets,
    log_dirs,
    metadata,
    partition_admin,
    produce,
    producer_ids,
    sasl,
    topics,
)
from zkafka.server.dispatcher import Handler

HANDLERS: dict[int, Handler] = {
    ApiKey.PRODUCE: produce.handle,
    ApiKey.FETCH: fetch.handle,
    ApiKey.LIST_OFFSETS: list_offsets.handle,
    ApiKey.METADATA: metadata.handle,
    ApiKey.LEADER_AND_ISR: controller_requests.handle_leader_and_isr,
    ApiKey.STOP_REPLICA: controller_requests.handle_stop_replica,
    ApiKey.UPDATE_METADATA: controller_requests.handle_update_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: controlled_shutdown.handle,
    ApiKey.API_VERSIONS: api_versions.handle,
    ApiKey.CREATE_TOPICS: topics.handle_create_topics,
    ApiKey.DELETE_TOPICS: topics.handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: topics.handle_create_partitions,
    ApiKey.INIT_PRODUCER_ID: producer_ids.handle,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: leader_epochs.handle,
    ApiKey.DESCRIBE_CONFIGS: configs.handle_describe,
    ApiKey.ALTER_CONFIGS: configs.handle_alter,
    ApiKey.FIND_COORDINATOR: groups.handle_find_coordinator,
    ApiKey.JOIN_GROUP: groups.handle_join_group,
    ApiKey.SYNC_GROUP: groups.handle_sync_group,
    ApiKey.HEARTBEAT: groups.handle_heartbeat,
    ApiKey.LEAVE_GROUP: groups.handle_leave_group,
    ApiKey.OFFSET_COMMIT: groups.handle_offset_commit,
    ApiKey.OFFSET_FETCH: groups.handle_offset_fetch,
    ApiKey.LIST_GROUPS: groups.handle_list_groups,
    ApiKey.DESCRIBE_GROUPS: groups.handle_describe_groups,
    ApiKey.DELETE_GROUPS: groups.handle_delete_groups,
    ApiKey.ELECT_LEADERS: partition_admin.handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: partition_admin.handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: partition_admin.handle_list_partition_reassignments,
    ApiKey.DELETE_RECORDS: delete_records.handle,
    ApiKey.OFFSET_DELETE: groups.handle_offset_delete,
    ApiKey.SASL_HANDSHAKE: sasl.handle_handshake,
    ApiKey.SASL_AUTHENTICATE: sasl.handle_authenticate,
    ApiKey.DESCRIBE_ACLS: acls.handle_describe,
    ApiKey.CREATE_ACLS: acls.handle_create,
    ApiKey.DELETE_ACLS: acls.handle_delete,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: config_changes.handle_incremental,
    ApiKey.DESCRIBE_LOG_DIRS: log_dirs.handle,
    ApiKey.DESCRIBE_CLUSTER: cluster.handle,
}
