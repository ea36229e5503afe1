"""Your own app: `python -m labserver measure` points the lab at a FastAPI app it has never seen."""
