select * from {{ ref('stg_locations') }}
