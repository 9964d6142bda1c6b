"""The release plan: every query in one versioned, JSON-able model, and how each is built.

``plan.model`` holds the plan (``Plan.to_json`` / ``Plan.from_json``), ``plan.identity`` a
dataset's content hash, and ``plan.build`` turns a plan query into the engine queries that
compute it, the dpcore mechanisms that noise it and its sensitivity under the privacy unit.
"""

from plan.build import Built, Loss, NoisyMax, Part, PartitionThreshold, build, build_plan
from plan.identity import DatasetIdentity, bytes_hash, content_hash, file_hash, frame_hash
from plan.model import (
    Accounting,
    Bounds,
    Budget,
    Categories,
    Count,
    Crosstab,
    Dataset,
    Grid,
    GroupBy,
    Histogram,
    Mean,
    Noise,
    Plan,
    PlanError,
    PlanQuery,
    PrivacyUnit,
    Quantiles,
    Selection,
    SelectionNoise,
    Sum,
    Target,
    Threshold,
)

__all__ = [
    "Accounting", "Bounds", "Budget", "Built", "Categories", "Count", "Crosstab", "Dataset",
    "DatasetIdentity", "Grid", "GroupBy", "Histogram", "Loss", "Mean", "Noise", "NoisyMax",
    "Part", "PartitionThreshold", "Plan", "PlanError", "PlanQuery", "PrivacyUnit",
    "Quantiles", "Selection", "SelectionNoise", "Sum", "Target", "Threshold", "build",
    "build_plan", "bytes_hash", "content_hash", "file_hash", "frame_hash",
]
