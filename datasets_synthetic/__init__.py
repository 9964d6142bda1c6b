"""Synthetic built-in datasets generated from a seed (numpy only): no real people in them.

``visits.clinic_visits`` is a person-level table (many rows per patient) for the privacy unit.
"""
