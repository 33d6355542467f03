select
    {{ dbt_utils.generate_surrogate_key(['id', 'sku']) }} as supply_uuid,
    sku as product_id,
    cost / 100.0 as supply_cost,
    perishable as is_perishable_supply
from {{ source('ecom', 'raw_supplies') }}
