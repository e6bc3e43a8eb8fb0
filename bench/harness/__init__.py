"""fibra's side-by-side benchmark harness (Python 3 standard library only); see bench/README.md."""
