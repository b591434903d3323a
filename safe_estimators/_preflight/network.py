"""The job's VPC: the subnets and security groups exist, in one VPC of the job's region, and
every subnet's route table reaches S3.

A training job in a VPC has no public address: it reaches S3 through a gateway endpoint
associated with the subnet's route table, a NAT gateway route, or an S3 interface endpoint in
the VPC. Without one the job fails when it downloads its data, or, worse, at the end, when it
uploads the artifacts ("Artifact upload failed ... route to an S3 VPC endpoint or a NAT").
A default route through a transit gateway, a peering connection, a network interface or an
instance may lead to S3 elsewhere: nothing is said about those.
"""

from __future__ import annotations

from typing import Any

from safe_estimators._preflight.context import Context
from safe_estimators._problems import Problem

_ONWARD = ("TransitGatewayId", "VpcPeeringConnectionId", "NetworkInterfaceId", "InstanceId")


def check(ctx: Context) -> list[Problem]:
    job = ctx.job
    if not job.subnets or not job.remote:
        return []
    subnets_at, groups_at = job.written("subnets"), job.written("security_group_ids")
    subnets, groups = ctx.map(
        lambda call: call(),
        [
            lambda: ctx.call(
                subnets_at, "ec2", "DescribeSubnets",
                Filters=[{"Name": "subnet-id", "Values": list(job.subnets)}],
            ),
            lambda: ctx.call(
                groups_at, "ec2", "DescribeSecurityGroups",
                Filters=[{"Name": "group-id", "Values": list(job.security_groups)}],
            ) if job.security_groups else {"SecurityGroups": []},
        ],
    )  # fmt: skip
    found = {s["SubnetId"]: s for s in subnets.get("Subnets", [])}
    problems = [
        Problem(
            f"{subnets_at}.{n}",
            f"the subnet {subnet!r} does not exist in {job.region} (in this account).",
            "name a subnet of the job's VPC in its region (aws ec2 describe-subnets).",
        )
        for n, subnet in enumerate(job.subnets)
        if subnet not in found
    ]
    vpcs = sorted({s["VpcId"] for s in found.values()})
    if len(vpcs) > 1:
        problems.append(
            Problem(
                subnets_at,
                f"the subnets are in {len(vpcs)} VPCs ({', '.join(vpcs)}); SageMaker needs "
                "them in one.",
                "name subnets of one VPC.",
            )
        )
    seen = {g["GroupId"]: g for g in groups.get("SecurityGroups", [])}
    for n, group in enumerate(job.security_groups):
        if group not in seen:
            problems.append(
                Problem(
                    f"{groups_at}.{n}",
                    f"the security group {group!r} does not exist in {job.region}.",
                    "name a security group of the job's VPC.",
                )
            )
        elif vpcs and seen[group]["VpcId"] not in vpcs:
            problems.append(
                Problem(
                    f"{groups_at}.{n}",
                    f"the security group {group!r} is in {seen[group]['VpcId']}, the subnets "
                    f"in {', '.join(vpcs)}.",
                    "name a security group of the subnets' VPC.",
                )
            )
    if len(vpcs) == 1:
        problems += _routes(ctx, vpcs[0], [s for s in job.subnets if s in found])
    return problems


def _routes(ctx: Context, vpc: str, subnets: list[str]) -> list[Problem]:
    region = ctx.job.region
    subnets_at = ctx.job.written("subnets")
    tables, endpoints = ctx.map(
        lambda call: call(),
        [
            lambda: ctx.call(
                subnets_at, "ec2", "DescribeRouteTables",
                Filters=[{"Name": "vpc-id", "Values": [vpc]}], MaxResults=100,
            ),
            lambda: ctx.call(
                subnets_at, "ec2", "DescribeVpcEndpoints",
                Filters=[
                    {"Name": "vpc-id", "Values": [vpc]},
                    {"Name": "service-name", "Values": [f"com.amazonaws.{region}.s3"]},
                ],
                MaxResults=100,
            ),
        ],
    )  # fmt: skip
    live = [e for e in endpoints.get("VpcEndpoints", []) if e.get("State", "available") in (
        "available", "pending", "pendingAcceptance")]  # fmt: skip
    if any(e.get("VpcEndpointType") == "Interface" for e in live):
        return []  # an S3 interface endpoint serves every subnet of the VPC
    gateway_tables = {t for e in live for t in e.get("RouteTableIds", [])}
    by_subnet: dict[str, dict[str, Any]] = {}
    main = None
    for table in tables.get("RouteTables", []):
        for association in table.get("Associations", []):
            if association.get("Main"):
                main = table
            if association.get("SubnetId"):
                by_subnet[association["SubnetId"]] = table
    problems = []
    for n, subnet in enumerate(ctx.job.subnets):
        if subnet not in subnets:
            continue
        table = by_subnet.get(subnet, main)
        if table is None or table["RouteTableId"] in gateway_tables:
            continue
        defaults = [
            r for r in table.get("Routes", [])
            if r.get("DestinationCidrBlock") == "0.0.0.0/0" and r.get("State") != "blackhole"
        ]  # fmt: skip
        if any(r.get("NatGatewayId") or any(r.get(k) for k in _ONWARD) for r in defaults):
            continue
        through = (
            " (its default route goes to an internet gateway, which a training job without a "
            "public address cannot use)"
            if any(str(r.get("GatewayId", "")).startswith("igw-") for r in defaults)
            else ""
        )
        problems.append(
            Problem(
                f"{subnets_at}.{n}",
                f"the subnet {subnet!r} has no route to S3: its route table "
                f"{table['RouteTableId']} has no S3 gateway endpoint and no NAT route{through}, "
                "and the VPC has no S3 interface endpoint. The job fails at the data download, "
                "or at the end, when it uploads the artifacts.",
                f"add an S3 gateway endpoint (com.amazonaws.{region}.s3) to the route table, or "
                "a 0.0.0.0/0 route to a NAT gateway.",
            )
        )
    return problems
