"""Classroom pages: the lessons list and the embed snippet."""
