"""``deployment: {from: manifest.yaml}``: a workload's deployment read from Kubernetes
manifests (:mod:`advisor.loading.paired`) instead of written out."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag

BLOCK_TAG = "deployment:block"
FROM_TAG = "deployment:from"


class DeploymentRef(BaseModel):
    """What runs today, read from Kubernetes manifests instead of written here."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, allow_inf_nan=False,
                              populate_by_name=True)

    from_: str | list[str] = Field(
        alias="from", min_length=1, description="Manifest file(s), relative to this file, "
        "that deploy this workload: a DynamoGraphDeployment, KServe LLMInferenceService, "
        "LeaderWorkerSet, DisaggregatedSet, Deployment/StatefulSet running vLLM or SGLang, "
        "or llm-d-modelservice Helm values (several files: their pools together). "
        "`pd-advisor check` gates what they deploy.")
    values_kind: Literal["llm-d"] | None = Field(
        None, description="How to read Helm values files that carry no kind (llm-d: "
        "llm-d-modelservice values); omitted: told apart by their keys.")


def deployment_tag(value: Any) -> str | None:
    """The union member a ``deployment:`` value is: a reference, or the block itself."""
    if isinstance(value, DeploymentRef) or (isinstance(value, dict) and "from" in value):
        return FROM_TAG
    if isinstance(value, dict | BaseModel):
        return BLOCK_TAG
    return None


def choice(block: type[BaseModel]) -> Any:
    """The ``deployment:`` annotation: the block model ``block`` or a :class:`DeploymentRef`."""
    return Annotated[
        Annotated[block, Tag(BLOCK_TAG)] | Annotated[DeploymentRef, Tag(FROM_TAG)],
        Discriminator(deployment_tag, custom_error_type="deployment_type",
                      custom_error_message="expected a mapping: the deployment's keys, or "
                                           "{from: manifest.yaml}"),
    ]
