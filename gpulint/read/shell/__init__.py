"""Shell text wherever it appears (scripts, Slurm batch files, Dockerfile RUN lines, Terraform user data): lexer, scanner and launcher command lines."""
