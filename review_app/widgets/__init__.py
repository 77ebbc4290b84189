"""Widgets of the review workstation."""
