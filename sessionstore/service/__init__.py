"""The HTTP service (SPEC sections 15-16): the store's operations over HTTP, per tenant, behind tokens.

``create_app(ServiceConfig(...))`` builds the ASGI application; ``sessionstore serve`` runs it on uvicorn.
Needs the ``server`` extra (FastAPI, uvicorn).
"""
