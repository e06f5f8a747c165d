"""`/topics`, `/topics/<name>`, its records, and the topic actions: create a topic, add partitions,
alter a config (form, confirmation, result: Kafka's own error text when the brokers refuse)."""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from zkafka.client.admin import NewTopic
from zkafka.client.errors import ConfigError
from zkafka.console.cluster_data import cluster_state, topic_detail
from zkafka.console.errors import ConsoleError
from zkafka.console.forms import choice_param, form_fields, int_param, require_writable
from zkafka.console.record_data import FORMATS, read_records
from zkafka.console.render import page
from zkafka.console.sessions import source_of
from zkafka.console.source import ClusterSource
from zkafka.console.topic_actions import (
    MAX_PARTITIONS,
    add_partitions,
    alter_config,
    config_change_fields,
    config_preview,
    partitions_change,
)
from zkafka.protocol import KafkaError

MAX_REPLICATION = 32_767


async def topics(request: Request) -> HTMLResponse:
    source = source_of(request)
    state = await cluster_state(source, None)
    internal = request.query_params.get("internal") == "1"
    shown = [t for t in state.topics if internal or not t.internal]
    return page(request, "topics.html", topics=shown, internal=internal)


async def topic(request: Request) -> HTMLResponse:
    source = source_of(request)
    detail = await topic_detail(source, request.path_params["name"])
    return page(request, "topic.html", detail=detail)


async def records(request: Request) -> HTMLResponse:
    source = source_of(request)
    q = request.query_params
    partition = int_param(q.get("partition"), "partition", default=0, high=MAX_PARTITIONS)
    offset = int_param(q.get("offset"), "offset")
    timestamp = int_param(q.get("timestamp"), "timestamp (ms since the epoch)")
    if timestamp is not None:
        offset = None  # the records form sends both; a timestamp typed in is what was asked for
    limit = int_param(q.get("limit"), "limit", default=20, low=1, high=source.settings.max_records)
    fmt = choice_param(q.get("format"), "format", FORMATS)
    assert partition is not None and limit is not None
    got = await read_records(source, request.path_params["name"], partition, offset, limit, fmt, timestamp)
    return page(request, "records.html", page=got, formats=FORMATS)


def _writable(source: ClusterSource) -> None:
    require_writable(source.settings.read_only, "topics cannot be created here")


def _new_topic(fields: dict[str, str]) -> NewTopic:
    name = fields.get("name", "")
    partitions = int_param(fields.get("partitions"), "partitions", default=-1, low=-1, high=MAX_PARTITIONS)
    replication = int_param(
        fields.get("replication_factor"), "replication factor", default=-1, low=-1, high=MAX_REPLICATION
    )
    assert partitions is not None and replication is not None
    try:
        return NewTopic(name, partitions, replication)
    except ConfigError as e:
        raise ConsoleError(400, str(e)) from None


async def create_form(request: Request) -> HTMLResponse:
    _writable(source_of(request))
    return page(request, "create_topic.html", stage="form", fields={}, error=None)


async def create(request: Request) -> Response:
    """First POST: the confirmation page; the POST with confirm=yes creates the topic."""
    source = source_of(request)
    _writable(source)
    fields = await form_fields(request)
    new = _new_topic(fields)
    if fields.get("confirm") != "yes":
        return page(request, "create_topic.html", stage="confirm", fields=fields, topic=new, error=None)
    result = (await source.admin.create_topics([new]))[new.name]
    if isinstance(result, KafkaError):
        # Kafka's answer as it gave it (e.g. INVALID_TOPIC_EXCEPTION with the broker's reason)
        return page(
            request, "create_topic.html", http_status=400, stage="form", fields=fields, error=str(result)
        )
    return RedirectResponse(request.url_for("topic", name=new.name), status_code=303)


async def partitions(request: Request) -> Response:
    """First POST: the controller's dry run (validate_only) to confirm; confirm=yes adds them."""
    source = source_of(request)
    require_writable(source.settings.read_only, "partitions cannot be added here")
    name = request.path_params["name"]
    fields = await form_fields(request)
    change = await partitions_change(source, name, fields)
    if fields.get("confirm") != "yes":
        return page(
            request,
            "confirm.html",
            title=f"Add partitions to {name}",
            summary=f"Grow topic {name} from {change.current} to {change.total} partition(s)? "
            "The controller accepted this as a dry run (validate_only). Keys hash to other "
            "partitions afterwards; records already written stay where they are.",
            headers=[],
            rows=[],
            extra=None,
            action=request.url_for("partitions", name=name).path,
            fields={"total": str(change.total)},
            button="Add partitions",
            can_confirm=True,
            cancel=request.url_for("topic", name=name).path,
        )
    await add_partitions(source, change)
    return RedirectResponse(request.url_for("topic", name=name), status_code=303)


async def config(request: Request) -> Response:
    """First POST: the brokers' dry run (validate_only) beside the current value and its source;
    confirm=yes alters the config."""
    source = source_of(request)
    require_writable(source.settings.read_only, "configs cannot be altered here")
    name = request.path_params["name"]
    fields = await form_fields(request)
    change = await config_preview(source, config_change_fields(name, fields))
    if fields.get("confirm") != "yes":
        current = change.current
        shown = "(not set)" if current is None else "(sensitive)" if current.is_sensitive else current.value
        new = "(removed: back to the broker's value)" if change.value is None else change.value
        return page(
            request,
            "confirm.html",
            title=f"Alter config of {name}",
            summary=f"Change {change.name} of topic {name}? The brokers accepted this as a dry run "
            "(validate_only).",
            headers=["Config", "Current value", "Source", "New value"],
            rows=[
                (
                    "config",
                    [change.name, shown, "—" if current is None else current.source.name, new],
                )
            ],
            extra=None,
            action=request.url_for("config", name=name).path,
            fields={k: fields.get(k, "") for k in ("name", "op", "value")},
            button="Alter config",
            can_confirm=True,
            cancel=request.url_for("topic", name=name).path,
        )
    await alter_config(source, change)
    return RedirectResponse(request.url_for("topic", name=name), status_code=303)


ROUTES = [
    Route("/topics", topics, name="topics"),
    Route("/topics/new", create_form, name="create_form"),
    Route("/topics/new", create, methods=["POST"], name="create"),
    Route("/topics/{name}", topic, name="topic"),
    Route("/topics/{name}/records", records, name="records"),
    Route("/topics/{name}/partitions", partitions, methods=["POST"], name="partitions"),
    Route("/topics/{name}/config", config, methods=["POST"], name="config"),
]
