"""The ``memoryLs`` settings as a pydantic model: their published schema and their rules.

:mod:`memory_ls.server.settings` holds what the server runs on, without pydantic
(~6 MB and a tenth of ``serve``'s imports): a value of the type the schema asks
for is taken there as it is, and only any other value comes here, to be judged by
this model exactly as every value used to be (lax conversions such as ``"70.5"``
included, and the reason an invalid value is reported with). ``make schemas``
publishes this model as ``schemas/settings.schema.json``.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    WithJsonSchema,
    field_validator,
)
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from memory_ls.core.similar import DEFAULT_THRESHOLD

NO_NUL = "^[^\\x00]*$"
"""What a path setting must match: no NUL character (the OS refuses every such path, so
the server would fail on every store it opens)."""
NUL_REASON = "a path cannot hold a NUL character"


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise PydanticCustomError("path_nul", NUL_REASON)
    return value


PathText = Annotated[
    str, AfterValidator(_no_nul), WithJsonSchema({"type": "string", "pattern": NO_NUL})
]
"""A path setting: a string without NUL (the schema says so with a pattern)."""

SeverityName = Literal["error", "warning", "information", "hint", "off"]


class SettingsModel(BaseModel):
    """Everything a client can configure."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, frozen=True, title="Settings"
    )

    agent_dir: PathText | None = Field(default=None, description="Pi's agent dir (global store).")
    trusted: bool | None = Field(
        default=None, strict=True, description="Explicit trust decision for the project."
    )
    read_only: bool = Field(
        default=False, strict=True, description="Refuse every change (plan modes)."
    )
    severity: dict[str, SeverityName] = Field(
        default_factory=dict, description="Severity per diagnostic code, or off."
    )
    similar_threshold: float = Field(
        default=DEFAULT_THRESHOLD,
        ge=0,
        le=100,
        allow_inf_nan=False,  # else NaN was refused as "greater than 100"
        description="Score (0-100) for `similar` hints.",
    )

    @field_validator("similar_threshold", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        """A number (or a string of one, read leniently), never a boolean, as the schema
        says: lax mode reads ``true`` as 1, a threshold that makes every pair "similar"."""
        if isinstance(value, bool):
            raise PydanticCustomError("float_type", "Input should be a valid number")
        return value
