"""Request-level merit-order dispatch (the ACE model, :mod:`.engine`), synthetic traces and the plan replay."""

from finops_cli.sim.dispatch.engine import DispatchResult, TimedEvent, Trace, simulate_dispatch
from finops_cli.sim.dispatch.trace import generate_trace

__all__ = ["DispatchResult", "TimedEvent", "Trace", "generate_trace", "simulate_dispatch"]
