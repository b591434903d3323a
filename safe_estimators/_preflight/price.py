"""What the job may cost: the on-demand hourly rate of its instance types for training in its
region (AWS Price List), its ceiling (instances x rate x ``max_run``), and the cheaper
instance types on which the same job fits, each with its own ceiling.

The rates are read with Price List ``GetProducts`` for ``AmazonSageMaker``, filtered to the
region (``regionCode``) and the training component (``component`` = ``Training``): the SDK's
own ``get_instance_rate_per_hour`` filters on the instance name and region only and takes the
first product, which may be another component's (Hosting, Processing). The offer file's
products carry ``instanceName``, ``regionCode`` and ``component``; their on-demand terms give a
price per unit ``Hrs`` in USD. A type with two different training rates is left unpriced rather
than guessed. The region's whole table is read once (a few pages) and cached for the month.
The Price List has no spot rate: a spot job's ceiling is its on-demand ceiling.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Sequence
from typing import Any

import attrs

from safe_estimators._preflight.context import DENIED, CouldNotCheck, error_code
from safe_estimators._preflight.guard import Clients
from safe_estimators._preflight.job import Job
from safe_estimators._problems import warning

SERVICE_CODE = "AmazonSageMaker"
MAX_PAGES = 20  # 100 products a page
CHEAPER_SHOWN = 3


def api_region(region: str) -> str:
    """The Price List API's endpoint region nearest ``region`` (it serves us-east-1,
    eu-central-1 and ap-south-1, as the SDK picks them)."""
    if region.startswith(("eu", "af", "me", "il")):
        return "eu-central-1"
    if region.startswith(("ap", "cn")):
        return "ap-south-1"
    return "us-east-1"


def _rates_of(price_list: Sequence[Any]) -> dict[str, float]:
    rates: dict[str, set[float]] = {}
    for item in price_list:
        product = json.loads(item) if isinstance(item, str) else item
        name = product.get("product", {}).get("attributes", {}).get("instanceName")
        if not name:
            continue
        for term in product.get("terms", {}).get("OnDemand", {}).values():
            for dimension in term.get("priceDimensions", {}).values():
                usd = dimension.get("pricePerUnit", {}).get("USD")
                if dimension.get("unit") == "Hrs" and usd is not None and float(usd) > 0:
                    rates.setdefault(name, set()).add(float(usd))
    return {name: next(iter(found)) for name, found in rates.items() if len(found) == 1}


def _get_products(client: Any, params: dict[str, Any]) -> Any:
    from botocore.exceptions import ClientError

    try:
        return client.get_products(**params)
    except ClientError as exc:
        code = error_code(exc)
        if code in DENIED:
            raise CouldNotCheck(
                warning(
                    "instance_type",
                    f"could not read the price: {code} on pricing:GetProducts.",
                    "allow pricing:GetProducts to the credentials, or leave out --price.",
                )
            ) from exc
        raise


def training_rates(clients: Clients, region: str) -> dict[str, float]:
    """Instance type -> on-demand USD per hour for training in ``region`` (cached a month)."""
    from safe_estimators._cache import remembered

    def derive() -> dict[str, float]:
        client = clients.get("pricing", region=api_region(region))
        found: list[Any] = []
        token = None
        for _ in range(MAX_PAGES):
            params: dict[str, Any] = {
                "ServiceCode": SERVICE_CODE,
                "FormatVersion": "aws_v1",
                "MaxResults": 100,
                "Filters": [
                    {"Type": "TERM_MATCH", "Field": "regionCode", "Value": region},
                    {"Type": "TERM_MATCH", "Field": "component", "Value": "Training"},
                ],
            }
            if token:
                params["NextToken"] = token
            page = _get_products(client, params)
            found += page.get("PriceList", [])
            token = page.get("NextToken")
            if not token:
                break
        return _rates_of(found)

    month = datetime.date.today().strftime("%Y-%m")
    value: dict[str, float] = remembered(
        f"preflight-prices-{region}.json",
        {"region": region, "month": month, "component": "Training", "format": 1},
        derive,
        # An empty table is asked again next time rather than trusted for a month.
        lambda v: (
            isinstance(v, dict) and bool(v) and all(isinstance(r, int | float) for r in v.values())
        ),
    )
    return value


@attrs.frozen
class Fit:
    """``count`` x ``instance_type`` at ``rate`` USD an hour: ``ceiling`` USD for the run."""

    instance_type: str
    count: int
    rate: float
    ceiling: float


@attrs.frozen
class Price:
    """The job's on-demand price in its region: per instance type, the ceiling over ``hours``
    (``max_run``), and cheaper instance types on which it fits."""

    region: str
    hours: float
    instances: tuple[Fit, ...]
    ceiling: float | None  # None: a type has no training rate in the Price List
    cheaper: tuple[Fit, ...] = ()
    unpriced: tuple[str, ...] = ()
    spot: bool = False

    def lines(self) -> list[str]:
        """The price as the text summary shows it."""
        out = [
            f"price: {f.count} x {f.instance_type} at ${f.rate:,.4g}/h on demand for training "
            f"in {self.region} (AWS Price List)"
            for f in self.instances
        ]
        out += [f"price: {t} has no training rate in {self.region} in the AWS Price List"
                for t in self.unpriced]  # fmt: skip
        if self.ceiling is not None:
            spot = " (managed spot training costs less; the Price List has no spot rate)"
            out.append(
                f"ceiling: ${self.ceiling:,.2f} if the job runs its whole max_run of "
                f"{self.hours:g} h{spot if self.spot else ''}"
            )
        out += [
            f"cheaper fit: {f.count} x {f.instance_type} at ${f.rate:,.4g}/h: ceiling "
            f"${f.ceiling:,.2f}"
            for f in self.cheaper
        ]
        return out

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready document of the price (USD)."""
        return {
            "region": self.region,
            "hours": self.hours,
            "instances": [attrs.asdict(f) for f in self.instances],
            "ceiling": self.ceiling,
            "cheaper": [attrs.asdict(f) for f in self.cheaper],
            "unpriced": list(self.unpriced),
            "currency": "USD",
            "source": "AWS Price List GetProducts (AmazonSageMaker, component Training)",
        }

    def _repr_markdown_(self) -> str:
        rows = ["| instance type | count | USD/h | ceiling (USD) |", "| --- | --- | --- | --- |"]
        rows += [f"| {f.instance_type} | {f.count} | {f.rate:,.4g} | |" for f in self.instances]
        if self.ceiling is not None:
            rows.append(f"| **the job** ({self.hours:g} h) | | | **{self.ceiling:,.2f}** |")
        rows += [f"| {f.instance_type} (fits) | {f.count} | {f.rate:,.4g} | {f.ceiling:,.2f} |"
                 for f in self.cheaper]  # fmt: skip
        return "\n".join(rows)


def price(clients: Clients, job: Job, fits: Sequence[tuple[str, int]] = ()) -> Price | None:
    """The job's price, and the cheaper of ``fits`` ((instance type, count) on which the same
    job fits); None for a job with no instances or no ``max_run``."""
    if not job.instances or not job.max_run_seconds or not job.remote:
        return None
    rates = training_rates(clients, job.region)
    hours = job.max_run_seconds / 3600
    priced = tuple(
        Fit(i.instance_type, i.count, rates[i.instance_type],
            i.count * rates[i.instance_type] * hours)
        for i in job.instances if i.instance_type in rates
    )  # fmt: skip
    unpriced = tuple(i.instance_type for i in job.instances if i.instance_type not in rates)
    ceiling = None if unpriced else sum(f.ceiling for f in priced)
    cheaper: list[Fit] = []
    own = {i.instance_type for i in job.instances}
    if ceiling is not None:
        for instance_type, number in fits:
            if instance_type in own or instance_type not in rates:
                continue
            cost = number * rates[instance_type] * hours
            if cost < ceiling:
                cheaper.append(Fit(instance_type, number, rates[instance_type], cost))
    cheaper.sort(key=lambda f: (f.ceiling, f.instance_type))
    return Price(
        job.region, hours, priced, ceiling, tuple(cheaper[:CHEAPER_SHOWN]), unpriced, job.spot
    )
