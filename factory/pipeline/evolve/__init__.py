"""The evolution stages: arena rollouts per category, the diagnosis over all of them, targeted tasks per category."""
