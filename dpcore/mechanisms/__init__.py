"""The catalogue of additive noise mechanisms: one module per family, one spec per kind.

``CATALOGUE`` maps each kind to its :class:`MechanismSpec`; ``make_mechanism`` builds one by
kind. The classes live in their family's module (``dpcore.mechanisms.laplace.Laplace``).
"""

from dpcore.mechanisms.base import AdditiveMechanism, AuditCase, MechanismSpec
from dpcore.mechanisms.catalogue import (
    CATALOGUE,
    ClaimAudit,
    audit_claim,
    make_mechanism,
    spec_for,
    spec_of,
)

__all__ = [
    "AdditiveMechanism",
    "AuditCase",
    "CATALOGUE",
    "ClaimAudit",
    "MechanismSpec",
    "audit_claim",
    "make_mechanism",
    "spec_for",
    "spec_of",
]
