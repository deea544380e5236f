"""Recall: channels, filters, fusion and time parsing."""
