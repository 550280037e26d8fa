"""The ``contract_commitments`` dataset: FOCUS 1.3's Contract Commitment columns (the terms of a contract, not
billed money), plus the service provider and the file each row came from."""

from __future__ import annotations

import pyarrow as pa

#: columns the spec requires and that may not be null
NOT_NULL = (
    "ContractCommitmentId",
    "ContractCommitmentCategory",
    "ContractCommitmentType",
    "ContractId",
    "ContractCommitmentPeriodStart",
    "ContractCommitmentPeriodEnd",
    "ContractPeriodStart",
    "ContractPeriodEnd",
)
#: columns the spec requires that may be null
NULLABLE = (
    "BillingCurrency",
    "ContractCommitmentCost",
    "ContractCommitmentDescription",
    "ContractCommitmentQuantity",
    "ContractCommitmentUnit",
)
TIMES = ("ContractCommitmentPeriodStart", "ContractCommitmentPeriodEnd", "ContractPeriodStart", "ContractPeriodEnd")
NUMBERS = ("ContractCommitmentCost", "ContractCommitmentQuantity")


def _type(name: str) -> pa.DataType:
    return pa.timestamp("us", tz="UTC") if name in TIMES else pa.float64() if name in NUMBERS else pa.string()


CONTRACT_SCHEMA = pa.schema(
    [(c, _type(c)) for c in (*NOT_NULL, *NULLABLE)]
    + [("ServiceProviderName", pa.string()), ("x_SourceFile", pa.string())]
)
