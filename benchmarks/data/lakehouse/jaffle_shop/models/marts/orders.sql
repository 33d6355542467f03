{{ config(materialized='table', tags=['finance']) }}

{%- set payment_methods = ['credit_card', 'coupon', 'bank_transfer', 'gift_card'] -%}

with orders as (
    select * from {{ ref('stg_orders') }}
),
payments as (
    select * from {{ ref('stg_payments') }}
),
refunds as (
    select order_id, sum(refunded_value) as refund_amount
    from {{ ref('refunds') }}
    group by 1
),
order_items as (
    select order_id, count(*) as count_order_items, sum(supply_cost) as order_cost
    from {{ ref('order_items') }}
    group by 1
),
order_payments as (
    select
        order_id,
        {% for method in payment_methods -%}
        sum(case when payment_method = '{{ method }}' and amount > 0 then amount else 0 end) as {{ method }}_amount,
        {% endfor -%}
        sum(case when amount > 0 then amount else 0 end) as gross_amount
    from payments
    group by 1
)
select
    orders.order_id,
    orders.customer_id,
    orders.location_id,
    orders.ordered_at,
    orders.order_total,
    order_payments.gross_amount,
    coalesce(refunds.refund_amount, 0) as refund_amount,
    order_payments.gross_amount - coalesce(refunds.refund_amount, 0) as net_amount,
    coalesce(refunds.refund_amount, 0) > 0 as is_refunded,
    row_number() over (partition by orders.customer_id order by orders.ordered_at) = 1 as is_first_order,
    order_items.count_order_items,
    order_items.order_cost
from orders
left join order_payments using (order_id)
left join refunds using (order_id)
left join order_items using (order_id)
