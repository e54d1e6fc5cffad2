"""SPARQL templates of the store, loaded with importlib.resources."""
