connection: "warehouse"

include: "/views/*.view.lkml"

explore: order_facts {
  label: "Orders and customers"
  description: "Explore orders with their customer and store; use for revenue and refund questions."
  join: customer_facts {
    type: left_outer
    sql_on: ${order_facts.customer_id} = ${customer_facts.customer_id} ;;
    relationship: many_to_one
  }
  join: store_facts {
    type: left_outer
    sql_on: ${order_facts.location_id} = ${store_facts.location_id} ;;
    relationship: many_to_one
  }
}
