select
    product_id, product_name, product_type, product_price,
    product_type = 'jaffle' as is_food_item,
    product_type = 'beverage' as is_drink_item
from {{ ref('stg_products') }}
