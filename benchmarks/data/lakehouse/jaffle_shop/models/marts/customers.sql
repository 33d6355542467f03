with customers as (
    select * from {{ ref('stg_customers') }}
),
orders as (
    select * from {{ ref('orders') }}
),
summary as (
    select
        customer_id,
        min(ordered_at) as first_ordered_at,
        max(ordered_at) as last_ordered_at,
        count(order_id) as count_lifetime_orders,
        sum(net_amount) as lifetime_spend
    from orders
    group by 1
)
select
    customers.customer_id,
    customers.customer_name,
    summary.first_ordered_at,
    summary.last_ordered_at,
    summary.count_lifetime_orders,
    summary.lifetime_spend,
    case when summary.count_lifetime_orders > 1 then 'returning' else 'new' end as customer_type
from customers
left join summary using (customer_id)
