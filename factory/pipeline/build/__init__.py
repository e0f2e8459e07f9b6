"""Build, per category: mined datasets -> databases and tool code -> tool tests (the gate) -> tool graphs."""
