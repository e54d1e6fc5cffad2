"""Grains in RDF: the vocabulary, the mapping of grains to quads, SPARQL text, answers.

- :mod:`.vocab`: the ontology's IRIs; :mod:`.terms`: which RDF term a belief's
  text stands for, and back; :mod:`.mapping`: a grain as quads (and N-Quads rows),
  and back;
- :mod:`.sparql`: the SPARQL the store writes and reads; :mod:`.limits`: what one
  query may cost; :mod:`.results`: answers in the W3C result formats;
  :mod:`.tables`: answers as Python values, DataFrames and HTML.

Pure functions on pyoxigraph terms, with no storage: this layer sits above the
codec and may import :mod:`oms_rdf.errors`, :mod:`oms_rdf.times` and
:mod:`oms_rdf.codec`, never the backends, the store or anything above them.
"""
