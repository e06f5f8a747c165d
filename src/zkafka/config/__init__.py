"""Broker configuration: Kafka's server.properties keys, defaults, checks and file format."""

from zkafka.config.broker import (
    BROKER_CONFIG_KEYS,
    BrokerConfig,
    ConfigKey,
    load_broker_config,
    parse_connection_overrides,
)
from zkafka.config.errors import ConfigError, PropertiesSyntaxError
from zkafka.config.listeners import Endpoint, parse_listener, parse_listeners
from zkafka.config.properties import format_properties, load_properties, parse_properties

__all__ = [
    "BROKER_CONFIG_KEYS",
    "BrokerConfig",
    "ConfigError",
    "ConfigKey",
    "Endpoint",
    "PropertiesSyntaxError",
    "format_properties",
    "load_broker_config",
    "load_properties",
    "parse_connection_overrides",
    "parse_listener",
    "parse_listeners",
    "parse_properties",
]
