"""finops: GPU-fleet FinOps — waste, one merit-order supply curve, and a MILP plan for the cheapest compliant mix."""

__version__ = "0.1.0"
