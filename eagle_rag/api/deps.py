"""FastAPI dependencies: the running EagleApp and the admitted caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from eagle_rag.api.security import NAMESPACE_HEADER, Caller, Gatekeeper
from eagle_rag.bootstrap import EagleApp


def eagle(request: Request) -> EagleApp:
    app: EagleApp = request.app.state.eagle
    return app


def caller(request: Request) -> Caller:
    gate: Gatekeeper = request.app.state.gate
    client = request.client.host if request.client else None
    return gate.admit(
        request.headers.get("authorization"), request.headers.get(NAMESPACE_HEADER), client
    )


App = Annotated[EagleApp, Depends(eagle)]
Who = Annotated[Caller, Depends(caller)]
