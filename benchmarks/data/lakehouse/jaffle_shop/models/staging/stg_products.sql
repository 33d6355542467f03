select
    sku as product_id,
    name as product_name,
    type as product_type,
    price / 100.0 as product_price
from {{ source('ecom', 'raw_products') }}
