"""Restock family: constrained purchasing, where orders of a supplier offer restock products and consume a budget."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from factory.lexicon import COST_WORDS, QUANTITY_FIELDS, STOCK_FIELDS, TARGET_FIELDS
from factory.models import Difficulty, EntitySpec, ToolSpec
from factory.tasks.programs.draft import MAX_WRITES, Draft, limited, program
from factory.tasks.programs.view import EnvView, as_number, numeric_fields, page_size, words


@dataclass
class PurchasePlan:
    """How an environment buys: orders of a supplier offer, charged to a budget, restocking a product."""

    order: EntitySpec
    create: ToolSpec
    offer: EntitySpec
    offer_fk: str  # order -> offer
    offer_list: ToolSpec
    cost: str  # offer field: unit cost
    product: EntitySpec
    product_fk: str  # offer -> product
    product_list: ToolSpec
    stock: str  # product field: units on hand
    target: str | None  # product field: level to restock up to, if the data has one
    budget: EntitySpec
    budget_fk: str  # order -> budget
    budget_field: str  # the budget's remaining amount, which orders consume
    budget_read: ToolSpec
    quantity: str  # order field
    amount: str  # order field
    supply: str | None  # offer field the quantity is taken from, if a rule says so


def purchase_plan(view: EnvView) -> PurchasePlan | None:
    """The constrained-purchasing shape, found through foreign keys and `consumes` rules; None if absent."""
    for order in view.spec.entities:
        for create in view.tools_of(order, "create"):
            props = create.parameters.get("properties") or {}
            fields = {f.name: f for f in order.fields if f.name in props}
            consumes = {r.field: r.target for r in order.rules if r.kind == "consumes" and r.field and r.target}
            quantity = next((n for n in QUANTITY_FIELDS if n in fields and fields[n].type == "integer"), None)
            money = [n for n, t in consumes.items() if n in fields and fields[n].type == "number"]
            if quantity is None or not money:
                continue
            amount = money[0]
            budget = view.entity(consumes[amount].split(".")[0])
            refs = {f.name: view.entity(f.references.split(".")[0]) for f in fields.values() if f.references}
            budget_fk = next(
                (n for n, e in refs.items() if e is not None and budget is not None and e.name == budget.name), None
            )
            if budget is None or budget_fk is None:
                continue
            budget_read = view.get_tool(budget) or view.list_tool(budget)
            for offer_fk, offer in refs.items():
                if offer is None or offer.name == budget.name or view.list_tool(offer) is None:
                    continue
                costs = [f.name for f in numeric_fields(offer) if any(w in f.name for w in COST_WORDS)]
                for pf in offer.fields:
                    product = view.entity(pf.references.split(".")[0]) if pf.references else None
                    if product is None or view.list_tool(product) is None:
                        continue
                    pnames = {f.name for f in product.fields if f.type == "integer"}
                    stock = next((n for n in STOCK_FIELDS if n in pnames), None)
                    required = set(create.parameters.get("required") or [])
                    if (
                        not costs
                        or stock is None
                        or budget_read is None
                        or required - {offer_fk, budget_fk, quantity, amount}
                    ):
                        continue
                    supply_target = consumes.get(quantity, "")
                    return PurchasePlan(
                        order=order,
                        create=create,
                        offer=offer,
                        offer_fk=offer_fk,
                        offer_list=view.list_tool(offer),  # type: ignore[arg-type]
                        cost=costs[0],
                        product=product,
                        product_fk=pf.name,
                        product_list=view.list_tool(product),  # type: ignore[arg-type]
                        stock=stock,
                        target=next((n for n in TARGET_FIELDS if n in pnames), None),
                        budget=budget,
                        budget_fk=budget_fk,
                        budget_field=consumes[amount].split(".")[1],
                        budget_read=budget_read,
                        quantity=quantity,
                        amount=amount,
                        supply=supply_target.split(".")[1] if supply_target.startswith(offer.name + ".") else None,
                    )
    return None


def simulate_restock(
    plan: PurchasePlan, view: EnvView, budget_id: Any, threshold: int | None
) -> list[tuple[Any, int, float]]:
    """The purchases the rule implies on the seed data: (offer id, units, amount), in product id order."""
    return [buy[:3] for buy in _simulate(plan, view, budget_id, threshold)]


def _simulate(
    plan: PurchasePlan, view: EnvView, budget_id: Any, threshold: int | None
) -> list[tuple[Any, int, float, bool]]:
    """The purchases, each with whether the offer's supply cut it (an order of the full units is refused)."""
    budget = next(b for b in view.rows(plan.budget) if b[plan.budget.primary_key] == budget_id)
    remaining = float(budget[plan.budget_field])
    offers = sorted(
        view.rows(plan.offer), key=lambda o: (o.get(plan.cost) is None, o.get(plan.cost), o[plan.offer.primary_key])
    )
    out = []
    for p in view.rows(plan.product):
        level = p.get(plan.target) if threshold is None and plan.target else threshold
        if level is None or p.get(plan.stock) is None or p[plan.stock] >= level:
            continue
        offer = next(
            (o for o in offers if o.get(plan.product_fk) == p[plan.product.primary_key] and o.get(plan.cost)), None
        )
        if offer is None:
            continue
        units = min(level - p[plan.stock], math.floor(remaining / offer[plan.cost] + 1e-9))
        wanted = units
        if plan.supply:
            units = min(units, int(offer.get(plan.supply) or 0))
        if units > 0:
            amount = round(units * offer[plan.cost], 2)
            remaining -= amount
            out.append((offer[plan.offer.primary_key], units, amount, units < wanted))
    return out


def propose_restock(view: EnvView, rng: random.Random) -> Iterator[Draft]:
    """Constrained purchasing: restock products below their level from the cheapest offer, within the
    offer's supply and the budget's remaining amount (the seeds' A: 3, B: 2 for lack of supply, C: none)."""
    plan = purchase_plan(view)
    if plan is None:
        return
    budgets = [b for b in view.rows(plan.budget) if (as_number(b.get(plan.budget_field)) or 0) > 0]
    stocks = sorted({p[plan.stock] for p in view.rows(plan.product) if isinstance(p.get(plan.stock), int)})
    thresholds: list[int | None] = [None] if plan.target else [s + 1 for s in stocks[: max(1, len(stocks) // 3)]]
    combos, cut = [], set()
    for b in budgets:
        for level in thresholds:
            buys = _simulate(plan, view, b[plan.budget.primary_key], level)
            if 2 <= len(buys) <= MAX_WRITES:
                combos.append((b[plan.budget.primary_key], b[plan.budget_field], level))
                if sum(short for *_, short in buys) >= max(1, view.knobs.recovery):
                    cut.add(combos[-1])
    retry = bool(plan.supply) and view.knobs.recovery >= 1  # order the full units; a refused order is retried
    combos = limited(combos, rng)
    if retry:  # the instances whose gold meets refusals first
        combos.sort(key=lambda c: c not in cut)
    for budget_id, remaining, level in combos:
        products, offer, stock = words(plan.product.table), words(plan.offer.name), words(plan.stock)
        goal = f"its {words(plan.target)}" if level is None else f"{level} units"
        below = f"whose {stock} is below {goal}"
        supply = f", nor the {offer}'s own {words(plan.supply)}" if plan.supply else ""
        fallback = ""
        if retry:
            supply, fallback = (
                "",
                f"Place one order per product; if the system refuses an order because the {offer} does not have "
                f"that many units, order only as many as its {words(plan.supply)} allows instead. ",
            )
        question = rng.choice(
            [
                f"Restock every one of the {products} {below}: going through them in ID order, order the missing "
                f"units up to {goal} from the cheapest {offer} for the product, charged to budget {budget_id} "
                f"({words(plan.budget_field)} {remaining}). Never exceed what the budget has left{supply}: when "
                f"{'either runs' if supply else 'it runs'} short, order as many units as it allows, and skip a "
                "product when none can be ordered. "
                f"Each order's {words(plan.amount)} is its units times the {offer}'s {words(plan.cost)}. "
                f"{fallback}What is the total amount spent?",
                f"Using budget {budget_id} (it has {remaining} left), bring the {products} {below} back up to "
                f"{goal}. Handle them in ID order, buy each from its cheapest {offer}, and set each order's "
                f"{words(plan.amount)} to its units times the {offer}'s {words(plan.cost)}. You may not spend "
                f"more than the budget has left{supply}; buy fewer units when you must, or none. {fallback}How much "
                "did you spend in total?",
            ]
        )
        level_code = f"row.get({plan.target!r})" if level is None else repr(level)
        order_args = (
            f"{plan.offer_fk}=offer[{plan.offer.primary_key!r}], {plan.budget_fk}={budget_id!r}, "
            f"{plan.quantity}=units, {plan.amount}=amount"
        )
        supply_code = ""
        if plan.supply and not retry:
            supply_code = f"\n    units = min(units, int(offer.get({plan.supply!r}) or 0))"
        if plan.budget_read.operation and plan.budget_read.operation.kind == "get":
            read = f"_ok(tools.{plan.budget_read.name}({plan.budget.name}_id={budget_id!r}))"
        else:
            read = (
                f"next(b for b in _all(tools.{plan.budget_read.name}, {page_size(plan.budget_read)})"
                f" if b[{plan.budget.primary_key!r}] == {budget_id!r})"
            )
        body = (
            f"remaining = {read}[{plan.budget_field!r}]\n"
            f"offers = _all(tools.{plan.offer_list.name}, {page_size(plan.offer_list)})\n"
            f"offers.sort(key=lambda o: (o.get({plan.cost!r}) is None, o.get({plan.cost!r}),"
            f" o[{plan.offer.primary_key!r}]))\n"
            "spent = 0.0\n"
            f"for row in _all(tools.{plan.product_list.name}, {page_size(plan.product_list)}):\n"
            f"    level = {level_code}\n"
            f"    if level is None or row.get({plan.stock!r}) is None or row[{plan.stock!r}] >= level:\n"
            "        continue\n"
            f"    offer = next((o for o in offers if o.get({plan.product_fk!r}) == row[{plan.product.primary_key!r}]"
            f" and o.get({plan.cost!r})), None)\n"
            "    if offer is None:\n"
            "        continue\n"
            f"    units = min(level - row[{plan.stock!r}], int(remaining / offer[{plan.cost!r}] + 1e-9)){supply_code}\n"
            "    if units <= 0:\n"
            "        continue\n"
            f"    amount = round(units * offer[{plan.cost!r}], 2)\n"
            f"    result = tools.{plan.create.name}({order_args})\n"
            + (
                "    if isinstance(result, dict) and 'error' in result:\n"
                f"        units = min(units, int(offer.get({plan.supply!r}) or 0))\n"
                "        if units <= 0:\n"
                "            continue\n"
                f"        amount = round(units * offer[{plan.cost!r}], 2)\n"
                f"        result = tools.{plan.create.name}({order_args})\n"
                if retry
                else ""
            )
            + "    _ok(result)\n"
            "    remaining -= amount\n"
            "    spent += amount\n"
            "return round(spent, 2)"
        )
        constraints = ["budget"] + (["supply"] if plan.supply else [])
        yield Draft(
            family="restock",
            question=question,
            program=program(body),
            capabilities=["loops", "constraint", "mutation"] + (["recovery"] if retry else []),
            difficulty=Difficulty(chain_length=4, constraints=constraints),
            mutates=True,
        )
