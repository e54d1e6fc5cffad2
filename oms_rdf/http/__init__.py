"""The store served to other processes: ``oms-rdf serve`` and ``oms-rdf mcp``.

- :mod:`.app` assembles the ASGI app and runs it (:func:`~.app.serve`) from
  :mod:`.protocol` (SPARQL 1.1 Protocol, Graph Store reads), :mod:`.facts` (the
  ``/v1`` facts API, with :mod:`.listing` and :mod:`.openapi`), :mod:`.page` (``/``),
  :mod:`.auth` (bearer tokens) and :mod:`.middleware` (Host and body guards).
- Shared by both servers, without Starlette: :mod:`.lanes` (worker threads for store
  calls), :mod:`.results` (answers in media types), :mod:`.render` (facts as JSON),
  :mod:`.federation` (SERVICE refused).
- :mod:`.mcp` is the Model Context Protocol server.

May import: the layers below (errors, times, codec, rdf, the store's public API,
io), Starlette and uvicorn (the ``[server]`` extra); never cli or notebook. Nothing
is imported here, so that ``import oms_rdf`` needs no server library.
"""
