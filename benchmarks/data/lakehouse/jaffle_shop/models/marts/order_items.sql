select
    items.order_item_id,
    items.order_id,
    items.product_id,
    products.product_price,
    supplies.supply_cost,
    products.product_type = 'jaffle' as is_food_item
from {{ ref('stg_order_items') }} as items
left join {{ ref('stg_products') }} as products using (product_id)
left join (
    select product_id, sum(supply_cost) as supply_cost from {{ ref('stg_supplies') }} group by 1
) as supplies using (product_id)
