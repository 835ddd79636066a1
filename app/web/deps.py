"""What routes share: the settings dependency and the shape of the error answers they document."""

from typing import Annotated

from fastapi import Depends
from pydantic import BaseModel

from app.settings import Settings, get_settings

SettingsDep = Annotated[Settings, Depends(get_settings)]


class ErrorItem(BaseModel):
    loc: list[str | int]
    msg: str
    type: str


class ErrorResponse(BaseModel):
    detail: list[ErrorItem] | str


ERRORS = {
    422: {"model": ErrorResponse},
    413: {"model": ErrorResponse},
    415: {"model": ErrorResponse, "description": "The body was not sent as application/json."},
}
