"""Tests of dpcore/: the numpy engine, its mechanisms (mechanisms/) and property tests
(properties/)."""
