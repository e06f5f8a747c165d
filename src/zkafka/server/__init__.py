"""The broker (docs/architecture.md, "Inside a broker").

`broker.Broker` only builds the broker's parts and orders their start and stop; each part is a
module of its own, handed the narrow collaborators it needs. Request handlers (`apis`) see the
broker through `services.BrokerServices` in their `dispatcher.RequestContext`, never the `Broker`.
"""
