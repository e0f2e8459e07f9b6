"""The GPU smoke run: two GRPO steps through verl on catalog tasks with a tiny local model (no download)."""
