{{ config(materialized='view', tags=['staging']) }}
with source as (
    select * from {{ source('ecom', 'raw_orders') }}
)
select
    id as order_id,
    store_id as location_id,
    customer as customer_id,
    subtotal / 100.0 as subtotal,
    tax_paid / 100.0 as tax_paid,
    order_total / 100.0 as order_total,
    {{ dbt.date_trunc('day', 'ordered_at') }} as ordered_at
from source
