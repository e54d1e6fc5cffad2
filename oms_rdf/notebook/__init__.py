"""Pictures of a store for notebooks: timelines of beliefs and graphs of entities.

:mod:`.plot` draws with matplotlib and networkx (the ``[notebooks]`` extra),
imported only when a picture is asked for. This layer sits on top: it reads a
store through its public API (:mod:`oms_rdf.store`) and may import every layer
below it, never the command line or the HTTP server.
"""
