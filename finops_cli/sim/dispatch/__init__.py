"""Request-level merit-order dispatch (the ACE model): see :mod:`finops_cli.sim.dispatch.engine`."""

from finops_cli.sim.dispatch.engine import (
    DispatchResult,
    SubstrateResult,
    TimedEvent,
    Trace,
    WorkloadResult,
    candidates,
    simulate_dispatch,
)
from finops_cli.sim.dispatch.events import DispatchEvent, EventsFile
from finops_cli.sim.dispatch.trace import generate_trace

__all__ = [
    "DispatchEvent",
    "DispatchResult",
    "EventsFile",
    "SubstrateResult",
    "TimedEvent",
    "Trace",
    "WorkloadResult",
    "candidates",
    "generate_trace",
    "simulate_dispatch",
]
