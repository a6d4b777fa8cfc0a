"""Never reads stdin; prints a line and exits 0."""
print("did not read the prompt", flush=True)
