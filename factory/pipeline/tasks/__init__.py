"""Tasks, per category: synthesis and the solvability filter, then the verifier audit."""
