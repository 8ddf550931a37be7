"""Safety rules: what in a skill's commands and text can do harm if an agent follows it."""
