"""What a question names: identifiers (``net_amount``, ``analytics.orders``, `quoted`) and,
for Chinese questions, the English warehouse words its terms stand for.

Identifiers are matched exactly against object names; the glossary terms join the sparse
(BM25) query and the dense query, so "退款" also finds ``refunds``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

# `quoted`, "quoted" or 'quoted' names; then bare snake_case or dotted identifiers.
_QUOTED = re.compile(r"[`\"'“”‘’]([A-Za-z_][A-Za-z0-9_.]*)[`\"'“”‘’]")
_BARE = re.compile(
    r"(?<![A-Za-z0-9_.])([A-Za-z_][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+)(?![A-Za-z0-9_])"
)
_CJK = re.compile(r"[\u3400-\u9fff]")

# Chinese business terms -> the English words warehouse metadata uses. Options extend it
# (``plugins.options.lakehouse-bi.glossary``).
GLOSSARY: dict[str, tuple[str, ...]] = {
    "订单": ("order", "orders"),
    "退款": ("refund", "refunds"),
    "客户": ("customer", "customers"),
    "顾客": ("customer", "customers"),
    "用户": ("user", "customer"),
    "金额": ("amount",),
    "净额": ("net", "amount"),
    "总额": ("total", "amount"),
    "收入": ("revenue",),
    "营收": ("revenue",),
    "支付": ("payment", "payments"),
    "付款": ("payment", "payments"),
    "产品": ("product", "products"),
    "商品": ("product", "item"),
    "门店": ("store", "location"),
    "店铺": ("store", "location"),
    "供应商": ("supplier", "suppliers"),
    "日期": ("date",),
    "时间": ("time", "date"),
    "数量": ("quantity", "count"),
    "折扣": ("discount",),
    "税": ("tax",),
    "利润": ("profit", "margin"),
    "成本": ("cost",),
    "首次": ("first",),
    "原因": ("reason",),
    "取值": ("values", "accepted"),
    "消费": ("spend",),
    "终身消费": ("lifetime", "spend"),
    "发票": ("invoice", "invoices"),
    "批发": ("wholesale",),
    "应付": ("due", "owed"),
    "税率": ("tax", "rate"),
    "毛额": ("gross", "amount"),
    "退款率": ("refund", "rate"),
    "客单价": ("average", "order", "value"),
    "仪表盘": ("dashboard",),
    "看板": ("dashboard",),
    "分析": ("analysis",),
    "报告": ("report", "review"),
    "账户": ("account",),
    "总账": ("general", "ledger"),
    "科目": ("account", "code"),
    "过期": ("expired",),
    "易腐": ("perishable",),
    "饮料": ("beverage", "drink"),
    "食品": ("food",),
    "最近": ("most", "recent", "last"),
    "状态": ("status",),
    "指标": ("metric",),
    "度量": ("measure",),
    "维度": ("dimension",),
    "模型": ("model",),
    "列": ("column",),
    "字段": ("column", "field"),
    "表": ("table",),
    "来源": ("source",),
    "上游": ("upstream",),
    "下游": ("downstream",),
    "每行": ("one", "row", "per"),
    "一行": ("one", "row", "per"),
    "粒度": ("grain",),
    "平均": ("average",),
    "终身价值": ("lifetime", "value"),
    "生命周期": ("lifetime",),
    "复购": ("repeat", "returning"),
    "新客": ("new", "customer"),
    "优惠券": ("coupon",),
    "礼品卡": ("gift", "card"),
    "信用卡": ("credit", "card"),
    "员工": ("employee",),
    "渠道": ("channel",),
    "活动": ("campaign",),
    "库存": ("inventory", "stock"),
    "发货": ("shipped", "shipping"),
    "配送": ("delivery", "shipping"),
}


_PER = re.compile(
    r"\b(?:one|a|single|each)\s+(?:row|record|line)\s+"
    r"(?:per|for each|for every|for an?)\s+([A-Za-z_]+)",
    re.I,
)
_GRAIN_ZH = ("每行", "一行", "每条", "一条记录", "粒度")
_GENERIC = frozenset({"one", "row", "per", "grain", "table", "column", "field", "model"})


@dataclass(frozen=True, slots=True)
class QuestionTerms:
    identifiers: tuple[str, ...]  # exact names, lower-cased, in the order asked
    translations: tuple[str, ...]  # English words for the question's Chinese terms
    grain: tuple[str, ...] = ()  # what the question wants one row per ("order")


_QUOTED_DOT = re.compile(r"[`\"]\s*\.\s*[`\"]")


def question_terms(text: str, glossary: Mapping[str, tuple[str, ...]] = GLOSSARY) -> QuestionTerms:
    text = _QUOTED_DOT.sub(".", text)  # `schema`.`table` names one object
    found: dict[str, None] = {}
    for match in _QUOTED.finditer(text):
        found[match.group(1).lower().strip(".")] = None
    for match in _BARE.finditer(text):
        found[match.group(1).lower().strip(".")] = None
    translations: dict[str, None] = {}
    if _CJK.search(text):
        for term in sorted(glossary, key=len, reverse=True):
            if term in text:
                translations.update(dict.fromkeys(glossary[term]))
    grain = [m.group(1).lower() for m in _PER.finditer(text)]
    if not grain:
        grain = _grain_zh(text, glossary)
    return QuestionTerms(tuple(n for n in found if n), tuple(translations), tuple(grain))


def _grain_zh(text: str, glossary: Mapping[str, tuple[str, ...]]) -> list[str]:
    """每行是一个客户 -> ["customer"]: the first glossary term after the grain marker."""
    starts = [text.find(m) + len(m) for m in _GRAIN_ZH if m in text]
    if not starts:
        return []
    after = text[min(starts) :]
    found = [(after.find(t), -len(t), t) for t in glossary if t in after]
    words = [w for _, _, t in sorted(found) for w in glossary[t] if w not in _GENERIC]
    return words[:1]


def name_candidates(identifier: str) -> tuple[str, str]:
    """``orders.net_amount`` -> (``orders``, ``net_amount``); a bare name has no parent."""
    if "." in identifier:
        parent, _, name = identifier.rpartition(".")
        return parent, name
    return "", identifier
