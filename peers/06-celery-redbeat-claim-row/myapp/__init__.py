"""Community backend: members, sections, threads, notifications and a coin wallet."""
