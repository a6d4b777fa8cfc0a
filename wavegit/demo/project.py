"""The demo's data: a tiny example project, its backlog, and the edit the built-in worker makes per item.

Everything is plain text so the package needs no data files. The project's tests use only the standard
library (``python -m unittest``), because the demo runs right after ``pip install``.

The backlog is built to show each rule once: ``MONEY-3`` overlaps ``MONEY-2`` (skipped), ``CART-4``
depends on ``PRICE-1`` (skipped), ``TAX-5``'s change fails its test, ``STOCK-6``'s worker also edits
``README.md``, which it does not own. ``PRICE-1`` and ``MONEY-2`` succeed.
"""

from __future__ import annotations

from dataclasses import dataclass

FILES: dict[str, str] = {
    "README.md": "# shop\n\nA tiny example project for the wavegit demo.\n",
    "shop/__init__.py": '"""A tiny shop: prices, money formatting, stock."""\n',
    "shop/pricing.py": '''"""Prices."""


def subtotal(prices: list[float]) -> float:
    return round(sum(prices), 2)
''',
    "shop/money.py": '''"""Money formatting."""


def money(amount: float) -> str:
    return f"${amount:.2f}"
''',
    "shop/stock.py": '''"""Stock levels."""


def in_stock(levels: dict[str, int], sku: str) -> bool:
    return levels.get(sku, 0) > 0
''',
    "tests/__init__.py": "",
    "tests/test_pricing.py": '''import unittest

from shop.pricing import subtotal


class SubtotalTest(unittest.TestCase):
    def test_sums_and_rounds(self) -> None:
        self.assertEqual(subtotal([0.1, 0.2]), 0.3)
''',
    "tests/test_money.py": '''import unittest

from shop.money import money


class MoneyTest(unittest.TestCase):
    def test_two_decimals(self) -> None:
        self.assertEqual(money(3.5), "$3.50")
''',
}


@dataclass(frozen=True)
class DemoItem:
    id: str
    title: str
    owns: tuple[str, ...]
    test_module: str
    """The unittest module (dotted) that is the item's test."""
    priority: str = "P2"
    depends_on: tuple[str, ...] = ()


ITEMS: tuple[DemoItem, ...] = (
    DemoItem("PRICE-1", "Add discount(amount, percent)", ("shop/pricing.py", "tests/test_pricing.py"),
             "tests.test_pricing", "P1"),
    DemoItem("MONEY-2", "Format money with thousands separators", ("shop/money.py", "tests/test_money.py"),
             "tests.test_money", "P1"),
    DemoItem("MONEY-3", "Format euros too", ("shop/money.py",), "tests.test_money"),
    DemoItem("CART-4", "Cart total with a discount code", ("shop/cart.py", "tests/test_cart.py"),
             "tests.test_cart", depends_on=("PRICE-1",)),
    DemoItem("TAX-5", "Add VAT to a net price", ("shop/tax.py", "tests/test_tax.py"), "tests.test_tax"),
    DemoItem("STOCK-6", "Add restock(levels, sku, n)", ("shop/stock.py", "tests/test_stock.py"),
             "tests.test_stock"),
)

EDITS: dict[str, dict[str, str]] = {
    "PRICE-1": {
        "shop/pricing.py": FILES["shop/pricing.py"] + '''

def discount(amount: float, percent: float) -> float:
    if not 0 <= percent <= 100:
        raise ValueError(f"percent must be between 0 and 100, got {percent}")
    return round(amount * (100 - percent) / 100, 2)
''',
        "tests/test_pricing.py": FILES["tests/test_pricing.py"].replace("import subtotal",
                                                                       "import discount, subtotal") + '''

class DiscountTest(unittest.TestCase):
    def test_takes_the_percentage_off(self) -> None:
        self.assertEqual(discount(80.0, 25), 60.0)

    def test_refuses_more_than_everything(self) -> None:
        with self.assertRaises(ValueError):
            discount(10.0, 120)
''',
    },
    "MONEY-2": {
        "shop/money.py": FILES["shop/money.py"].replace(":.2f", ":,.2f"),
        "tests/test_money.py": FILES["tests/test_money.py"] + '''
    def test_thousands_separators(self) -> None:
        self.assertEqual(money(1234567.891), "$1,234,567.89")
''',
    },
    # Deliberately wrong: adds the rate itself instead of a percentage, so the item's test fails.
    "TAX-5": {
        "shop/tax.py": '''"""Value added tax."""


def with_vat(net: float, rate_percent: float) -> float:
    return round(net + rate_percent, 2)
''',
        "tests/test_tax.py": '''import unittest

from shop.tax import with_vat


class VatTest(unittest.TestCase):
    def test_adds_the_rate_as_a_percentage(self) -> None:
        self.assertEqual(with_vat(100.0, 20), 120.0)
        self.assertEqual(with_vat(50.0, 10), 55.0)
''',
    },
    # Correct code, but the worker also "tidies" README.md, which STOCK-6 does not own.
    "STOCK-6": {
        "shop/stock.py": FILES["shop/stock.py"] + '''

def restock(levels: dict[str, int], sku: str, n: int) -> dict[str, int]:
    return {**levels, sku: levels.get(sku, 0) + n}
''',
        "tests/test_stock.py": '''import unittest

from shop.stock import restock


class RestockTest(unittest.TestCase):
    def test_adds_to_the_level(self) -> None:
        self.assertEqual(restock({"a": 1}, "a", 2), {"a": 3})
''',
        "README.md": FILES["README.md"].replace("demo.", "demo. Now with restocking!"),
    },
}
"""What the built-in worker writes per item: the project's files with its additions, or new ones."""
