"""`zkafka acls --bootstrap-server`: ACLs through a broker's ACL APIs (DescribeAcls, CreateAcls,
DeleteAcls), with the same three operations `zkafka acls` uses on ZooKeeper (create, delete,
describe), so the tool prints the same either way. Any broker answers these APIs: the first of the
bootstrap servers that accepts a connection is used."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from zkafka.cli.errors import CliError
from zkafka.cli.target import client_security
from zkafka.client.cluster import parse_bootstrap
from zkafka.client.connection import BrokerConnection
from zkafka.protocol import ErrorCode
from zkafka.protocol.messages import (
    CreateAclsRequest,
    DeleteAclsRequest,
    DescribeAclsRequest,
)
from zkafka.security.acl_filters import AclBindingFilter
from zkafka.security.acl_wire import (
    ANY,
    OPERATION_CODES,
    PATTERN_CODES,
    PATTERN_FILTER_CODES,
    PERMISSION_CODES,
    RESOURCE_CODES,
    described_bindings,
)
from zkafka.zk.acls import AclEntry, ResourcePattern

TIMEOUT_S = 30.0


def _error(code: int, message: str | None) -> str:
    try:
        name = ErrorCode(code).name
    except ValueError:
        name = f"error {code}"
    return f"{name}: {message}" if message else name


def _filter_fields(f: AclBindingFilter) -> dict[str, Any]:
    p, e = f.pattern, f.entry
    return {
        "resource_type_filter": ANY if p.resource_type is None else RESOURCE_CODES[p.resource_type],
        "resource_name_filter": p.name,
        "pattern_type_filter": PATTERN_FILTER_CODES[p.pattern_type],
        "principal_filter": e.principal,
        "host_filter": e.host,
        "operation": ANY if e.operation is None else OPERATION_CODES[e.operation],
        "permission_type": ANY if e.permission_type is None else PERMISSION_CODES[e.permission_type],
    }


class BrokerAcls:
    def __init__(self, loop: asyncio.AbstractEventLoop, conn: BrokerConnection) -> None:
        self._loop = loop
        self._conn = conn

    @classmethod
    @contextmanager
    def connect(cls, bootstrap: str, command_config: str | None = None) -> Iterator[BrokerAcls]:
        try:
            addresses = parse_bootstrap(bootstrap)
        except ValueError as e:
            raise CliError(f"bad --bootstrap-server {bootstrap!r}: {e}") from None
        security = client_security(command_config)
        loop = asyncio.new_event_loop()
        try:
            conn = None
            errors = []
            for host, port in addresses:
                try:
                    conn = loop.run_until_complete(
                        BrokerConnection.open(host, port, client_id="zkafka-acls", security=security)
                    )
                    break
                except (OSError, TimeoutError) as e:
                    errors.append(str(e))
            if conn is None:
                raise CliError(f"no broker of {bootstrap} answered: {'; '.join(errors)}")
            try:
                yield cls(loop, conn)
            finally:
                conn.close()
        finally:
            loop.close()

    def _send(self, request: Any) -> Any:
        try:
            return self._loop.run_until_complete(self._conn.send(request, timeout=TIMEOUT_S))
        except (OSError, TimeoutError) as e:
            raise CliError(f"broker {self._conn.host}:{self._conn.port}: {e}") from None
        except Exception as e:  # no common version: a broker without the ACL APIs
            raise CliError(f"broker {self._conn.host}:{self._conn.port}: {e}") from None

    def create(self, bindings: Iterable[tuple[ResourcePattern, AclEntry]]) -> None:
        listed = list(bindings)
        creations = [
            CreateAclsRequest.AclCreation(
                resource_type=RESOURCE_CODES[p.resource_type],
                resource_name=p.name,
                resource_pattern_type=PATTERN_CODES[p.pattern_type],
                principal=e.principal,
                host=e.host,
                operation=OPERATION_CODES[e.operation],
                permission_type=PERMISSION_CODES[e.permission_type],
            )
            for p, e in listed
        ]
        response = self._send(CreateAclsRequest(creations=creations))
        failed = [_error(r.error_code, r.error_message) for r in response.results if r.error_code]
        if failed:
            raise ValueError("; ".join(dict.fromkeys(failed)))

    def delete(self, filters: Sequence[AclBindingFilter]) -> None:
        request = DeleteAclsRequest(
            filters=[DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(f)) for f in filters]
        )
        response = self._send(request)
        failed = [_error(r.error_code, r.error_message) for r in response.filter_results if r.error_code]
        if failed:
            raise CliError("Error while removing ACLs: " + "; ".join(dict.fromkeys(failed)))

    def describe(self, binding_filter: AclBindingFilter) -> dict[ResourcePattern, frozenset[AclEntry]]:
        response = self._send(DescribeAclsRequest(**_filter_fields(binding_filter)))
        if response.error_code:
            raise CliError("Error while listing ACLs: " + _error(response.error_code, response.error_message))
        return described_bindings(response.resources)
